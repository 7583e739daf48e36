"""Rebuild o200k_base.tiktoken (the vocabulary openai_harmony loads) from gpt-oss's tokenizer.json.

openai_harmony downloads o200k_base.tiktoken and checks its SHA-256; the oracle runs offline, so
this script writes the same bytes from the committed tokenizer.json (ranks 0..199997, each line
"base64(token bytes) rank"). The caller verifies the hash harmony expects before using it.
"""
import base64, gzip, hashlib, json, sys

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}

def main(src, dst):
    with gzip.open(src, "rt", encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    dec = bytes_to_unicode()
    lines = sorted(((rank, bytes(dec[ch] for ch in tok)) for tok, rank in vocab.items()))
    out = b"".join(base64.b64encode(b) + b" " + str(rank).encode() + b"\n" for rank, b in lines)
    with open(dst, "wb") as f:
        f.write(out)
    print(hashlib.sha256(out).hexdigest())

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
