package main

import "context"

func runRender(ctx context.Context, env cliEnv, args []string) error {
	fs := newFlagSet(env, "render", "[flags]")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	return errNotImplemented
}
