package main

import "context"

func runBench(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "bench", "[flags]")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
