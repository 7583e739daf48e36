// Regenerates qwen3_ids.txt: real Qwen3 token ids used by the artifact encoding
// benchmarks and size measurements (a realistic id distribution, not random ids).
//   cd store/testdata && node gen_ids.js > qwen3_ids.txt
// Needs `npm ci` in tools/oracle (the Rust HF tokenizers as a Node addon).
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("../../tools/oracle/node_modules/@anush008/tokenizers");

async function main() {
  const root = path.join(__dirname, "..", "..");
  const json = fs.readFileSync(path.join(root, "testdata/models/qwen3/tokenizer.json"), "utf8");
  const tok = Tokenizer.fromString(json);
  // A mix of prose and code, like an agent conversation.
  const files = ["README.md", "main.go", "Makefile", "store/testdata/gen_ids.js"];
  let text = "";
  for (const f of files) {
    try { text += fs.readFileSync(path.join(root, f), "utf8") + "\n"; } catch (e) {}
  }
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  const ids = enc.getIds();
  process.stdout.write(ids.join(" ") + "\n");
}
main();
