package render

// Regenerates the render golden suite from the oracles (Python Jinja2 3.1.6, Node with
// tools/oracle's npm packages); see testdata/render/README.md. `make golden` runs it.
//go:generate sh -c "cd .. && python3 tools/oracle/render_cases.py > testdata/render/cases.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_oracle.py qwen3 - testdata/models/qwen3/tokenizer_config.json < testdata/render/cases.jsonl > testdata/render/qwen3.text.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_oracle.py qwen3-8b testdata/render/templates/qwen3-8b.jinja testdata/models/qwen3/tokenizer_config.json < testdata/render/cases.jsonl > testdata/render/qwen3-8b.text.jsonl"
//go:generate sh -c "cd .. && node tools/oracle/render_ids.js testdata/models/qwen3/tokenizer.json < testdata/render/qwen3.text.jsonl > testdata/render/qwen3.ids.jsonl"
//go:generate sh -c "cd .. && node tools/oracle/render_ids.js testdata/models/qwen3/tokenizer.json < testdata/render/qwen3-8b.text.jsonl > testdata/render/qwen3-8b.ids.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_cases_responses.py > testdata/render/responses_cases.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_oracle.py responses-qwen3 - testdata/models/qwen3/tokenizer_config.json --responses < testdata/render/responses_cases.jsonl > testdata/render/responses-qwen3.text.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_oracle.py responses-qwen3-8b testdata/render/templates/qwen3-8b.jinja testdata/models/qwen3/tokenizer_config.json --responses < testdata/render/responses_cases.jsonl > testdata/render/responses-qwen3-8b.text.jsonl"
//go:generate sh -c "cd .. && node tools/oracle/render_ids.js testdata/models/qwen3/tokenizer.json < testdata/render/responses-qwen3.text.jsonl > testdata/render/responses-qwen3.ids.jsonl"
//go:generate sh -c "cd .. && node tools/oracle/render_ids.js testdata/models/qwen3/tokenizer.json < testdata/render/responses-qwen3-8b.text.jsonl > testdata/render/responses-qwen3-8b.ids.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_cases_families.py > testdata/render/family_cases.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_oracle.py --families testdata/render/families.json testdata/render/family_cases.jsonl"
//go:generate sh -c "cd .. && python3 tools/oracle/render_family_ids.py testdata/render/families.json"
