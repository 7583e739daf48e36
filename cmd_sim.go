package main

import "context"

func runSim(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "sim", "[flags]")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
