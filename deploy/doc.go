// Package deploy holds stitch's deployment artifacts and the tests that keep them honest.
//
// # Contents
//
//   - ../docker-compose.yml: a workstation stack, profile "gpu" (vLLM on an NVIDIA GPU) or profile
//     "sim" (the CPU simulator, no GPU), both with Redis; checked by compose_test.go through
//     [github.com/compose-spec/compose-go/v2], the reference Compose loader.
//   - kubernetes/: stitch as a sidecar in the vLLM pod (Deployment, Service, Secrets, kustomization)
//     and a note on llm-d; checked by kubernetes_test.go.
//
// Both tests cross-check every stitch flag and STITCH_* variable the artifacts use against
// [github.com/stitchllm/stitch/configs], so a renamed flag fails here before it fails in a cluster.
// The package has no non-test code.
package deploy
