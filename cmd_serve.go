package main

import "context"

func runServe(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "serve", "[flags]")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
