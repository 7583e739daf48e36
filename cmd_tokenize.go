package main

import "context"

func runTokenize(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "tokenize", "[flags]")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
