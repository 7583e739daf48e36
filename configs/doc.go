// Package configs holds stitch's configuration schema, its defaults and its loader.
//
// # Sources and precedence
//
// A value comes from, in increasing precedence: the default, the YAML file named by --config,
// the environment (STITCH_<FLAG> with dashes as underscores, e.g. STITCH_UPSTREAM), and the
// command-line flag. Model profiles (several served models, each with its own directory, parsers,
// continuation mode and chat_template_kwargs defaults) exist only in the YAML file; the flags
// --model-dir and --served-model-name describe the single model of a flag-only setup.
//
// Only main reads this package: every other package takes its own Options struct.
package configs
