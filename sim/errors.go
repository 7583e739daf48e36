package sim

import "errors"

// ErrNoTokenizer is returned by [New] when [Options.Tokenizer] is nil: load the model directory's
// tokenizer.json first.
var ErrNoTokenizer = errors.New("sim: no tokenizer")

// ErrUnsupportedModel is returned by [New] when the tokenizer lacks the chat tokens of a supported
// family (Qwen3's <|im_start|> and <|im_end|>): the scripted model cannot answer in its format.
var ErrUnsupportedModel = errors.New("sim: unsupported model family")

// ErrBadOptions is returned by [New] for out-of-range options; the message names each problem.
var ErrBadOptions = errors.New("sim: bad options")
