"""Tokenization: the per-row `encode_plus` loop of the classic TPU notebooks vs `tpututor.tokenize.encode`.

20,000 real texts (all Rotten Tomatoes snippets, then BBC News paragraphs) to length 128, the same
tokenizer (the MiniLM's WordPiece) in every row of the table, timed side by side in one run.
"""
import itertools, sys
import numpy as np
from common import ratio, best_of, report, table

def texts(n=20_000):
    from tpututor.data import rotten_tomatoes, bbc_news
    rt = rotten_tomatoes().text.tolist()
    paras = [p.strip() for t in bbc_news().text for p in t.split('\n') if len(p.split()) >= 5]
    return list(itertools.islice(itertools.chain(rt, paras), n))

def main(n=20_000, max_len=128):
    from transformers import AutoTokenizer, BertTokenizer
    from tpututor.models import resolve_model
    from tpututor.tokenize import encode, load_tokenizer
    data = texts(n); path = resolve_model('minilm')
    fast, slow, tok = AutoTokenizer.from_pretrained(path), BertTokenizer.from_pretrained(path), load_tokenizer(path)
    def loop(t):
        def run():
            out = [t.encode_plus(x, max_length=max_len, padding='max_length', truncation=True) for x in data]
            return np.array([d['input_ids'] for d in out], dtype=np.int32), np.array([d['attention_mask'] for d in out], dtype=np.int32)
        return run
    def batched():
        d = fast(data, max_length=max_len, padding='max_length', truncation=True, return_tensors='np')
        return d['input_ids'].astype(np.int32), d['attention_mask'].astype(np.int32)
    def ours():
        e = encode(tok, data, max_len=max_len); return e.input_ids, e.attention_mask
    t_ours, ref = best_of(ours)
    rows = []
    for name, fn, rep in [('per-row encode_plus, fast tokenizer (AutoTokenizer)', loop(fast), 3),
                          ('per-row encode_plus, Python tokenizer (BertTokenizer)', loop(slow), 1),
                          ('one batched call, fast tokenizer (tokenizer(texts, ...))', batched, 3),
                          ('tpututor.tokenize.encode', ours, 3)]:
        t, out = best_of(fn, rep) if fn is not ours else (t_ours, ref)
        assert all((a == b).all() for a, b in zip(out, ref)), f'{name} gave different arrays'
        rows.append({'method': name, 'seconds': t, 'texts/s': len(data) / t, 'tpututor speed-up': t / t_ours})
    report('tokenize', f'Tokenization: {len(data):,} real texts to length {max_len}',
           table(rows, ['method', 'seconds', 'texts/s', 'tpututor speed-up']) +
           '\n\nAll four produce identical int32 arrays (checked in the run). The goal of 5x over the fast per-row loop '
           'is missed on 2 cores: the Rust WordPiece itself (about 21 µs per text on this machine) is the floor, and a '
           'batch can only be split 2 ways here; the margin grows with the cores of a TPU VM host.', './run.sh bench tokenize',
           goals=[ratio('tokenization: tpututor.encode vs the per-row fast-tokenizer loop', rows[0]['tpututor speed-up'], 5.0),
                  ratio('tokenization: tpututor.encode vs one batched Hugging Face call', rows[2]['tpututor speed-up'], 1.0)])

if __name__ == '__main__': main(*map(int, sys.argv[1:]))
