package sim

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tidwall/gjson"

	modelfamily "github.com/stitchllm/stitch/family"
)

// maxBodyBytes bounds a request body (a 32k-token prompt as JSON ids is about 250 kB).
const maxBodyBytes = 64 << 20

// Server is the simulated vLLM server, an http.Handler. Create it with [New]; it is safe for
// concurrent use and holds no goroutines, so it needs no Close.
type Server struct {
	opts      Options
	tok       Tokenizer
	model     *scriptedModel
	cache     *prefixCache
	metrics   *simMetrics
	router    chi.Router
	imEnd     uint32 // the dialect's end of an assistant turn (<|im_end|> for ChatML)
	endOfText uint32 // its end of a plain completion (<|endoftext|> for ChatML)
	callEnd   uint32 // Harmony's <|call|>
	// genStops are the model's generation_config stop ids besides its EOS (gpt-oss: <|call|>).
	genStops []uint32
	created  int64

	faultMu sync.Mutex
	faults  *rand.Rand

	recordMu sync.Mutex
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for opts. It fails when the tokenizer is missing or has no chat markup the
// simulator reads, when a configured parser writes markers the tokenizer lacks, or when an option
// is out of range (all problems at once).
func New(opts Options) (*Server, error) {
	opts.applyDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("new simulator: %w", err)
	}
	s := &Server{
		opts:    opts,
		tok:     opts.Tokenizer,
		cache:   newPrefixCache(opts.BlockSize, opts.KVBlocks, opts.Hybrid, opts.PrefillChunk, opts.KVEvents),
		created: time.Now().Unix(),
		faults:  newFaultSource(opts.Seed),
	}
	s.model = &scriptedModel{prose: newProseWriter(s.tok), outputLen: opts.OutputLen}
	if err := s.selectFamily(); err != nil {
		return nil, fmt.Errorf("new simulator: %w", err)
	}
	s.metrics = newSimMetrics(s)

	r := chi.NewRouter()
	r.Post("/v1/completions", s.handleCompletions)
	r.Post("/v1/chat/completions", s.handleChatCompletions)
	r.Post("/tokenize", s.handleTokenize)
	r.Post("/detokenize", s.handleDetokenize)
	r.Get("/v1/models", s.handleModels)
	r.Post("/reset_prefix_cache", s.handleResetPrefixCache)
	r.Get("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Get("/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"version":"`+Version+`"}`))
	})
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		s.writeError(w, &apiError{status: http.StatusNotFound, typ: "NotFoundError", message: "Not Found"})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		s.writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "MethodNotAllowed", message: "Method Not Allowed"})
	})
	s.router = r
	return s, nil
}

// selectFamily picks the prompt dialect and the answer format: Harmony for a tokenizer with
// Harmony's markers (or --tool-call-parser openai, which then requires them), else the
// tokenizer's chat markup and the configured parsers.
func (s *Server) selectFamily() error {
	o := &s.opts
	hn := modelfamily.HarmonyNames()
	harmonyTok := requireTokens(s.tok, "tool call parser openai (Harmony)", harmonyMarkers) == nil
	if o.ToolCallParser == hn.ToolCallParser || (o.ToolCallParser == "" && harmonyTok) {
		if err := requireTokens(s.tok, "tool call parser openai (Harmony)", harmonyMarkers); err != nil {
			return err
		}
		if o.ReasoningParser != "" && o.ReasoningParser != hn.ReasoningParser {
			return fmt.Errorf("%w: reasoning parser %q with Harmony (want %s)", ErrUnsupportedModel, o.ReasoningParser, hn.ReasoningParser)
		}
		s.model.dialect, s.model.harmony = harmonyDialect, true
		s.model.fam = &family{parser: hn.ToolCallParser}
		s.imEnd, _ = s.tok.TokenID(hReturn)
		s.callEnd, _ = s.tok.TokenID(hCall)
		s.endOfText, _ = s.tok.TokenID(harmonyDialect.textEnd)
		s.genStops = []uint32{s.callEnd}
		return nil
	}
	if o.ReasoningParser == hn.ReasoningParser {
		return fmt.Errorf("%w: reasoning parser %s needs --tool-call-parser openai (Harmony)", ErrUnsupportedModel, hn.ReasoningParser)
	}
	d, err := detectDialect(s.tok)
	if err != nil {
		return err
	}
	fam, err := newFamily(s.tok, o.ToolCallParser, o.ReasoningParser)
	if err != nil {
		return err
	}
	s.model.dialect, s.model.fam = d, fam
	s.imEnd, _ = s.tok.TokenID(d.chatEnd)
	s.endOfText, _ = s.tok.TokenID(d.textEnd)
	return nil
}

// handleResetPrefixCache drops the prefix cache (vLLM's POST /reset_prefix_cache, a development
// route there): 200 when it is empty afterwards, 400 while running requests hold blocks.
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if !s.cache.reset() {
		s.writeError(w, &apiError{status: http.StatusBadRequest, typ: "BadRequestError", message: "Failed to reset prefix cache: running requests hold blocks"})
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Version is what GET /version reports.
const Version = "0.11.0+stitch.sim"

// ServeHTTP routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.router.ServeHTTP(w, r)
}

// Stats is a snapshot of the prefix cache counters, in tokens, since the Server was created.
type Stats struct {
	// Queries is the number of prompt tokens looked up; Hits those served from cache. Hits /
	// Queries is the prefix-cache hit ratio; both equal vLLM's prefix_cache_queries/hits.
	Queries, Hits uint64
	// Blocks is the number of cached blocks; Used those held by running requests.
	Blocks, Used int
}

// Stats returns the prefix-cache counters.
func (s *Server) Stats() Stats {
	st := s.cache.stats()
	return Stats{Queries: st.queries, Hits: st.hits, Blocks: st.blocks, Used: st.used}
}

// MetricsRegistry returns the Server's own Prometheus registry (what GET /metrics serves), so an
// embedding process can expose it elsewhere.
func (s *Server) MetricsRegistry() *prometheus.Registry { return s.metrics.reg }

// apiError is an error reported in vLLM's shape.
type apiError struct {
	status  int
	typ     string // BadRequestError, NotFoundError, InternalServerError, NotImplementedError
	param   string
	message string
}

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "BadRequestError", param: param, message: fmt.Sprintf(format, args...)}
}

func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, appendErrorBody(nil, e))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client is gone; nothing to do
}

// readBody reads a JSON request body.
func readBody(r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	if err != nil {
		return nil, badRequest("", "read request body: %v", err)
	}
	if !gjson.ValidBytes(body) || len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return nil, badRequest("", "JSON decode error: the body must be a JSON object")
	}
	return body, nil
}

// checkModel reports a 404 unless model is empty, the served model name or a LoRA adapter; it
// returns the adapter's name ("" for the base model).
func (s *Server) checkModel(model string) (string, *apiError) {
	if model == "" || model == s.opts.ServedModelName {
		return "", nil
	}
	if slices.Contains(s.opts.LoRAModules, model) {
		return model, nil
	}
	return "", &apiError{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
		message: fmt.Sprintf("The model `%s` does not exist.", model)}
}

// handleModels lists the base model, then each LoRA adapter with the base as parent, as vLLM does.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	b := []byte(`{"object":"list","data":[`)
	b = s.appendModelCard(b, s.opts.ServedModelName, s.opts.ModelRoot, "")
	for _, name := range s.opts.LoRAModules {
		b = append(b, ',')
		b = s.appendModelCard(b, name, name, s.opts.ServedModelName)
	}
	writeJSON(w, http.StatusOK, append(b, "]}"...))
}

func (s *Server) appendModelCard(b []byte, id, root, parent string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	b = append(b, `,"owned_by":"vllm","root":`...)
	b = appendJSONString(b, root)
	b = append(b, `,"parent":`...)
	b = appendNullableString(b, parent)
	b = append(b, `,"max_model_len":`...)
	if parent != "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(s.opts.MaxModelLen), 10)
	}
	b = append(b, `,"permission":[{"id":"modelperm-sim","object":"model_permission","created":`...)
	b = strconv.AppendInt(b, s.created, 10)
	return append(b, `,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"*","group":null,"is_blocking":false}]}`...)
}

// newID returns a vLLM-style request id: prefix + 32 hex digits.
func newID(prefix string) string {
	return fmt.Sprintf("%s%016x%016x", prefix, rand.Uint64(), rand.Uint64())
}
