"""The memory estimate against the TPU's own compiler, and every tutorial's TPU setting compiled for its chip.

Each row builds the keras backend's training step from a checkpoint's config alone (the fields of its config.json on the
hub, written out below: nothing is downloaded, no weight is made) and has libtpu compile it for TPU v5e-8 or v6e-8 on
this CPU (`tpututor.backends.keras.tpu.compile_run`). Beside the compiler's total per device stands `tpututor.memory_plan`'s
estimate (`memory_plan`), which `tpututor plan` prints without compiling; the goal is that it stays within 25% of the
compiler on every row, and that the largest batch the estimate names compiles and fits. Nothing here ran on a TPU:
every figure is what libtpu compiled for the chip.

The tutorials' TPU settings (tutorial 01's RoBERTa-base k-fold, tutorial 05's Qwen2.5-1.5B with LoRA on a 4 x 2 mesh)
are compiled for v5e-8 program by program, each length bucket's training and prediction step, with the roofline time of
the whole job: the record each tutorial prints at its top.

A compile takes from seconds (tiny configs) to minutes (a large model) here, so each row's compiled figures are kept in
bench/results/tpu_plan_compiles.jsonl with the hash of the code that built the program and the versions of JAX, libtpu,
Keras and KerasHub: a row whose program code and versions are unchanged is not compiled again (`--fresh` compiles
every row), and the estimate beside it is always today's. Where the code has changed, the row's programs are lowered
again (seconds) and a program whose StableHLO hashes as before (`program_key`) keeps its figures: only a program that
changed is compiled.

    ./run.sh bench tpu_plan                  recorded
    python bench/bench_tpu_plan.py --fresh   every row compiled again
    python bench/bench_tpu_plan.py --smoke   one tiny BERT step for v5e-8 and its estimate
    python bench/bench_tpu_plan.py --child ROW   one row in this process (what the bench starts)"""
import json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report, table, provenance, track_imports, child_result, smoke_alone, RESULTS, SMOKE, IMPORTS

# ---------------------------------------------------------------- the checkpoints, as their config.json says
_BERT = dict(model_type='bert', vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
_ROBERTA = dict(_BERT, model_type='roberta', vocab_size=50265, max_position_embeddings=514, type_vocab_size=1,
                pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
_DEBERTA = dict(_BERT, model_type='deberta-v2', vocab_size=128100, type_vocab_size=0, relative_attention=True,
                position_buckets=256, norm_rel_ebd='layer_norm', share_att_key=True, pos_att_type=['p2c', 'c2p'],
                position_biased_input=False, max_relative_positions=-1, layer_norm_eps=1e-7, pad_token_id=0)
_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
_QWEN = dict(model_type='qwen2', vocab_size=151936, hidden_size=1536, num_hidden_layers=28, num_attention_heads=12,
             num_key_value_heads=2, intermediate_size=8960, max_position_embeddings=32768, tie_word_embeddings=True,
             rope_theta=1000000.0, rms_norm_eps=1e-6, hidden_act='silu')
CONFIGS = {
    'bert-base-uncased': _BERT,
    'bert-large-uncased': dict(_BERT, **_LARGE),
    'roberta-base': _ROBERTA,
    'roberta-large': dict(_ROBERTA, **_LARGE),
    'xlm-roberta-base': dict(_ROBERTA, model_type='xlm-roberta', vocab_size=250002),
    'microsoft/deberta-v3-base': _DEBERTA,
    'distilbert-base-uncased': dict(model_type='distilbert', vocab_size=30522, dim=768, n_layers=6, n_heads=12,
                                    hidden_dim=3072, max_position_embeddings=512),
    'albert-base-v2': dict(_BERT, model_type='albert', vocab_size=30000, embedding_size=128, num_hidden_groups=1,
                           inner_group_num=1),
    'Qwen/Qwen2.5-0.5B': dict(_QWEN, hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                              intermediate_size=4864),
    'Qwen/Qwen2.5-1.5B': _QWEN,
    'sentence-transformers/all-MiniLM-L6-v2': dict(_BERT, hidden_size=384, num_hidden_layers=6,
                                                   intermediate_size=1536),
    # a tiny random size (what the tests compile), with BERT's vocabulary
    'tiny bert': dict(_BERT, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
}

def _row(model, batch, length, precision='bf16', acc='v5e-8', lora=0, mp=1, **kw):
    return dict(model=model, batch=batch, length=length, precision=precision, accelerator=acc, lora=lora,
                model_parallel=mp, **kw)

# every family the keras backend trains, tiny / base / large, vocabularies of 30,522 to 250,002 tokens, the three
# precisions, two batches, two lengths, a decoder LLM with LoRA on a 4 x 2 mesh; v5e-8 and v6e-8
GRID = [
    _row('bert-base-uncased', 16, 128), _row('bert-base-uncased', 32, 128), _row('bert-base-uncased', 16, 128, 'fp32'),
    _row('bert-base-uncased', 16, 128, 'pure_bf16'), _row('roberta-base', 16, 128), _row('xlm-roberta-base', 16, 128),
    _row('microsoft/deberta-v3-base', 16, 128), _row('bert-large-uncased', 16, 128), _row('roberta-large', 8, 256),
    *[_row('tiny bert', b, t, p) for b, t, p in
      ((32, 128, 'bf16'), (64, 128, 'bf16'), (32, 256, 'bf16'), (32, 128, 'fp32'), (32, 128, 'pure_bf16'))],
    _row('Qwen/Qwen2.5-0.5B', 8, 256, lora=8, mp=2),
    _row('roberta-large', 16, 256, acc='v6e-8'), _row('Qwen/Qwen2.5-0.5B', 8, 256, acc='v6e-8', lora=8, mp=2),
]
# the largest batch the estimate names, compiled: does it fit?
LARGEST = [_row('bert-base-uncased', 16, 128)]
# the tutorials' TPU settings (their TrainConfig), with the lengths their buckets pad to and their training rows
# as each runs where the competition's data is absent: Rotten Tomatoes (its buckets from MiniLM's tokenizer)
TUTORIALS = {
    'tutorials/01_keras_kfold.ipynb': dict(
        row=_row('roberta-base', 16, 128, lengths=[24, 40, 80], spe=32), rows=10202, folds=5, epochs=3,
        data="Rotten Tomatoes' 10,202 training rows in 3 length buckets (24, 40, 80 tokens)"),
    'tutorials/05_llm_classifier.ipynb': dict(
        row=_row('Qwen/Qwen2.5-1.5B', 8, 256, lora=8, mp=2, lengths=[24, 40, 80], spe=32), rows=10202, folds=5,
        epochs=2, data="Rotten Tomatoes' 10,202 training rows in 3 length buckets (24, 40, 80 tokens)"),
    # the xla backend (torch_xla, SPMD over the slice): traced by torch_xla on this CPU, compiled by libtpu
    'tutorials/03_xla_ranking.ipynb': dict(
        row=_row('roberta-base', 16, 64, lengths=[64], backend='xla', task='ranking', n_outputs=1), rows=4500,
        folds=5, epochs=2, predict_rows=1500,
        data="4,500 (more, less) pairs of 64 tokens, 1,500 held-out snippets scored by each fold"),
    'tutorials/04_xla_cores.ipynb': dict(
        row=_row('sentence-transformers/all-MiniLM-L6-v2', 32, 64, lengths=[64], backend='xla'), rows=8192, folds=1,
        epochs=3, predict_rows=2048, data="8,192 training rows of 64 tokens, 2,048 validation rows, one training"),
}
SMOKE_ROWS = [_row('tiny bert', 8, 32)]
GOAL = 0.25   # the estimate within this share of the compiler's total, every row

def config_folder(model:str)->str:
    "A folder holding `model`'s config.json as the hub has it (defaults filled in by transformers), and nothing else"
    from transformers import AutoConfig
    c = dict(CONFIGS[model]); mt = c.pop('model_type')
    d = Path(tempfile.mkdtemp(prefix='tpututor-config-'))
    (d / 'config.json').write_text(AutoConfig.for_model(mt, **c).to_json_string())
    return str(d)

def train_config(row:dict, epochs:int=1):
    from tpututor.config import TrainConfig
    return TrainConfig(model=config_folder(row['model']), task=row.get('task', 'classification'),
                       n_outputs=row.get('n_outputs', 2), max_len=row['length'],
                       batch_size=row['batch'], precision=row['precision'], lora=row['lora'],
                       model_parallel=row['model_parallel'], steps_per_execution=row.get('spe', 1), epochs=epochs,
                       pack='pack_shape' in row, pack_shape=row.get('pack_shape'))

def child(row:dict, known:dict|None=None)->dict:
    "Compile `row`'s programs for its chip in this process (those `known` by key only lowered): their figures, the code"
    lengths = row.get('lengths') or [row['length']]
    t0 = time.time()
    if row.get('backend') == 'xla':   # torch_xla traces in a child of its own; JAX only compiles here
        from tpututor.backends.xla.tpu import compile_xla_run
        progs = compile_xla_run(train_config(row), row['accelerator'], lengths, known=known)
    else:
        from tpututor.devices.jax import import_keras
        import_keras()
        from tpututor.backends.keras.tpu import compile_run
        progs = compile_run(train_config(row), row['accelerator'], lengths, predict=bool(row.get('lengths')),
                            known=known)
    mods = sorted(m for m in sys.modules if m.startswith('tpututor.') and getattr(sys.modules[m], '__file__', None))
    from tpututor.records import code_hash   # after the list: the code that built the programs, not the hashing's
    return dict(programs=progs, seconds=round(sum(p['seconds'] for p in progs), 1),
                lowered_s=round(time.time() - t0, 1), modules=mods, program_code=code_hash(mods),
                versions=versions(row.get('backend', 'keras')))

def versions(backend:str='keras')->dict:
    "What a row's compiled figures depend on besides its code: JAX, libtpu and the backend's framework"
    from importlib.metadata import version
    names = ('jax', 'libtpu') + (('torch', 'torch_xla') if backend == 'xla' else ('keras', 'keras_hub'))
    return {n: version(n.replace('_', '-')) for n in names}

def key(row:dict)->str: return json.dumps(row, sort_keys=True)

def compiled(rows:list, fresh:bool=False)->dict:
    "key -> a child's result for each row: from tpu_plan_compiles.jsonl where its program code and versions are today's"
    from tpututor.records import code_hash, module_file
    runs_file = RESULTS / 'tpu_plan_compiles.jsonl'   # a row's compile a line (the record is tpu_plan.json)
    runs = {} if SMOKE or fresh or not runs_file.exists() else {
        key(r['row']): r for r in map(json.loads, runs_file.read_text().splitlines())}
    for i, row in enumerate(rows):
        k, old = key(row), runs.get(key(row))
        same = old and old['versions'] == versions(row.get('backend', 'keras'))
        if same and all(module_file(m).exists() for m in old['modules']) and code_hash(old['modules']) == old['program_code']:
            with open(os.environ[IMPORTS], 'a') as f:   # the record hashes them
                f.write('\n'.join(old['modules']) + '\n')
            continue
        # another code: each program lowered again, and compiled only if its StableHLO is not one compiled before
        known = {p['program']: p for p in old['programs'] if 'program' in p} if same else {}
        print(f"[{i + 1}/{len(rows)}] {'lowering' if known else 'compiling'} {row['model']} {row['batch']} x "
              f"{row['length']} {row['precision']} for {row['accelerator']}...", flush=True)
        with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f: json.dump(known, f)
        try: res = child_result([sys.executable, __file__, '--child', k, f.name], f"compiling {row['model']}")
        finally: os.unlink(f.name)
        fresh_ones = [p for p in res['programs'] if not p.get('reused')]
        runs[k] = dict(row=row, date=old['date'] if old and not fresh_ones else time.strftime('%Y-%m-%d'), **res)
        if not SMOKE:   # kept as each row ends: a stop resumes
            runs_file.write_text(''.join(json.dumps(r) + '\n' for r in runs.values()))
    return runs

def estimate(row:dict, batch:int|None=None, length:int|None=None)->dict:
    "`memory_plan` of `row` (at another batch or length), on its slice's mesh"
    from tpututor.memory_plan import memory_plan, slice_devices
    from transformers import AutoConfig
    c = dict(CONFIGS[row['model']]); mt = c.pop('model_type')
    return memory_plan(AutoConfig.for_model(mt, **c).to_dict(), length or row['length'], batch or row['batch'],
                       row['precision'], row['lora'], row['model_parallel'], devices=slice_devices(row['accelerator']))

def main(fresh=False):
    track_imports()
    from tpututor.memory_plan import largest_batch, hbm_bytes
    rows = SMOKE_ROWS if SMOKE else GRID
    largest = [] if SMOKE else [dict(r, batch=largest_batch(estimate(r), hbm_bytes(r['accelerator'])),
                                     largest=True) for r in LARGEST]
    tuts = {} if SMOKE else {nb: dict(t['row'], setting=nb) for nb, t in TUTORIALS.items()}
    packed = [] if SMOKE else [packed_row()]
    runs = compiled(rows + list(tuts.values()) + largest + packed, fresh)
    MiB, table_rows, goals = 2**20, [], []
    for row in rows + largest:
        p = runs[key(row)]['programs'][0]
        est = estimate(row)['total']
        off = est / p['total'] - 1 if p['fits'] else None
        name = f"{row['model']}, {row['batch']} x {row['length']}, {row['precision']}" + (
            f", LoRA {row['lora']}, model parallel {row['model_parallel']}" if row['lora'] else '')
        table_rows.append({'model, rows x tokens per device, precision': name, 'chip': row['accelerator'],
                           'compiler (MiB)': f"{p['total'] / MiB:,.0f}" if p['fits'] else f"refused ({p['refused']})",
                           'of which temporaries': f"{p['temporaries'] / MiB:,.0f}",
                           'estimate (MiB)': f'{est / MiB:,.0f}', 'estimate / compiler':
                           f'{est / p["total"]:.2f}', 'compile (s)': runs[key(row)]['seconds'],
                           'GFLOP': f"{p['flops'] / 1e9:,.1f}" if p['flops'] else '-'})
        if row.get('largest'):
            goals.append(dict(comparison=f"the largest batch the estimate names ({row['batch']} rows of "
                              f"{row['length']}, {row['model']}, {row['accelerator']}) compiles and fits",
                              measured=f"{p['total'] / MiB:,.0f} of {p['hbm'] / MiB:,.0f} MiB" if p['fits']
                              else 'does not fit', goal='fits', met=bool(p['fits']), run='largest batch'))
        else:
            goals.append(dict(comparison=f"estimate vs TPU compiler: {name}, {row['accelerator']}",
                              measured='refused' if off is None else f'{off:+.0%}', goal=f'within {GOAL:.0%}',
                              met=off is not None and abs(off) <= GOAL, run=f"{name}, {row['accelerator']}"))
    body = ('Per device, for the keras backend\'s training step compiled by libtpu from each checkpoint\'s config '
            'alone (AdamW, a 2-class head; rows per device; data parallel unless named): the compiler\'s total '
            '(arguments + outputs - aliased + temporaries + code, from `memory_analysis()`), its temporaries, and '
            '`memory_plan`\'s estimate. Compiled for the chip on this CPU, never run on one.\n\n' + table(
                table_rows, list(table_rows[0])))
    tut = tutorial_records(tuts, runs)
    for nb, t in tut.items():
        goals.append(dict(comparison=f'{nb}: TPU setting compiled for {t["accelerator"]}', measured='fits' if
                          t['fits'] else 'does not fit', goal='fits', met=t['fits'], run=nb, tutorial=t))
    if tut: body += '\n\n' + tutorial_text(tut)
    pad = {} if SMOKE else padding(runs, packed[0])
    if pad:
        body += '\n\n' + padding_text(pad)
        goals.append(dict(comparison="the padding question on a v5e-8 (tutorial 01's setting): FLOPs per real token, "
                          "padded to 128 against its buckets", goal='-', met=None, run='padding', padding=pad,
                          measured=f"{pad['fixed']['flops_per_token'] / pad['buckets']['flops_per_token']:.2f}x"))
    vs = {**versions('xla'), **versions()} if tuts else versions()
    chips = 'TPU ' + ', '.join(dict.fromkeys(r['accelerator'] for r in rows + largest + list(tuts.values())))
    for g in goals: g.update(compiled_for=chips, libtpu=vs['libtpu'])   # the Tested-on table's TPU row
    body += (f"\n\nlibtpu {vs['libtpu']}, JAX {vs['jax']}, Keras {vs['keras']}, KerasHub {vs['keras_hub']}" +
             (f"; torch {vs['torch']}, torch_xla {vs['torch_xla']} (the xla backend's rows)." if tuts else '.'))
    report('tpu_plan', 'The estimate against the TPU compiler', body, provenance('tpu_plan'), goals)

def tutorial_records(tuts:dict, runs:dict)->dict:
    "notebook -> what its top cell prints: programs, per-device HBM, roofline epoch and job time, versions"
    from tpututor.backends.keras.tpu import plan_figures
    out = {}
    for nb, row in tuts.items():
        t, r = TUTORIALS[nb], runs[key(row)]
        f = plan_figures(train_config(row, t['epochs']), r['programs'], t['rows'], t['folds'],
                         predict_rows=t.get('predict_rows'))
        progs = [{k: p[k] for k in ('kind', 'rows', 'batch', 'length', 'total', 'hbm', 'fits', 'flops', 'hbm_bytes',
                                    'roofline_s', 'seconds')} for p in f['programs']]
        for p in progs:   # the estimate on the slice's mesh (a decoder's weights split over all its devices)
            p['estimate'] = estimate(row, p['batch'], p['length'])['total'] if p['kind'] == 'train' else None
        out[nb] = dict(model=row['model'], accelerator=row['accelerator'], data=t['data'], folds=t['folds'],
                       epochs=t['epochs'], programs=progs, fits=f['fits'], steps_per_fold=f.get('steps_per_fold'),
                       fold_s=f.get('fold_s'), job_s=f.get('job_s'), compile_s=r['seconds'], **r['versions'])
    return out

def tutorial_text(tut:dict)->str:
    MiB, rows = 2**20, []
    for nb, t in tut.items():
        for p in t['programs']:
            rows.append({'TPU setting of': nb, 'program': f"{p['kind']} {p['rows']} x {p['length']}",
                         'per device (MiB)': f"{p['total'] / MiB:,.0f} of {p['hbm'] / MiB:,.0f}",
                         'estimate (MiB)': f"{p['estimate'] / MiB:,.0f}" if p['estimate'] else '-',
                         'roofline (ms)': f"{p['roofline_s'] * 1e3:.2f}", 'compile (s)': p['seconds']})
    jobs = '; '.join(f"{nb}: " + (f"{t['folds']} folds x " if t['folds'] > 1 else 'one training of ') +
                     f"{t['steps_per_fold']} steps, {t['job_s'] / 60:.1f} min of roofline"
                     for nb, t in tut.items() if t.get('job_s'))
    return ('The tutorials\' TPU settings, every program compiled for v5e-8 (global rows x tokens):\n\n' +
            table(rows, list(rows[0])) + f'\n\nRoofline time of the whole job (the least it can take): {jobs}.')

def _tutorial_texts():
    "Tutorial 01's training texts where the competition's data is absent, encoded to 128 tokens"
    from tpututor.data import rotten_tomatoes
    from tpututor.encoding import encode
    return encode('minilm', rotten_tomatoes().text.tolist()[:TUTORIALS['tutorials/01_keras_kfold.ipynb']['rows']],
                  max_len=128)

def packed_row()->dict:
    "Tutorial 01's setting packed: rows of 128 tokens holding about 16 texts a device a step, as `run_kfold` fixes it"
    from tpututor.packing import pack_shape
    enc = _tutorial_texts()
    return _row('roberta-base', 16, 128, spe=32, pack_shape=list(pack_shape(enc.lengths, 128, 16)))   # training only

def padding(runs:dict, packed:dict)->dict:
    """Tutorial 01's setting on a v5e-8, every batch padded to 128 tokens, to its bucket or packed: the compiler's FLOPs
    per real token, HBM bytes per training text and programs per run, for the stand-in data's texts and lengths"""
    import math, numpy as np
    from tpututor.encoding import assign_buckets
    from tpututor.packing import packed_steps
    nb = 'tutorials/01_keras_kfold.ipynb'
    t, tut = TUTORIALS[nb], dict(TUTORIALS[nb]['row'], setting=nb)
    enc = _tutorial_texts()
    lens = enc.lengths
    fixed = runs[key(_row('roberta-base', 16, 128))]['programs'][0]
    train = {p['length']: p for p in runs[key(tut)]['programs'] if p['kind'] == 'train'}
    gb = fixed['rows']   # rows per global batch (16 a device on 8)
    def way(programs, at):   # at: each row's padded length
        steps = {L: math.ceil((at == L).sum() / gb) for L in programs}
        flops = sum(programs[L]['flops'] * 8 * n for L, n in steps.items())   # the compiler's FLOPs are per device
        moved = sum(programs[L]['hbm_bytes'] * 8 * n for L, n in steps.items())
        return dict(lengths=sorted(programs), steps=sum(steps.values()), programs=2 * len(programs),
                    flops_per_token=flops / lens.sum(), hbm_bytes_per_row=moved / len(lens),
                    roofline_s=sum(programs[L]['roofline_s'] * n for L, n in steps.items()))
    buckets = sorted(train)
    pk = runs[key(packed)]['programs'][0]   # the packed training step: pack_shape's rows a device, 128 tokens
    r, most = packed['pack_shape']   # rows a device: a step holds 8 devices' rows
    steps = len(packed_steps(enc, (r * 8, most), seed=0)[1])   # an epoch, packed as `fit` packs it
    pack = dict(lengths=[128], steps=steps, programs=2, flops_per_token=pk['flops'] * 8 * steps / lens.sum(),
                hbm_bytes_per_row=pk['hbm_bytes'] * 8 * steps / len(lens), roofline_s=pk['roofline_s'] * steps,
                shape=packed['pack_shape'])
    return dict(rows=int(len(lens)), real_tokens=int(lens.sum()), fixed=way({128: fixed}, np.full(len(lens), 128)),
                buckets=way(train, np.asarray(buckets)[assign_buckets(lens, buckets)]), packed=pack)

def padding_text(pad:dict)->str:
    rows = [{'padding': f"{name} ({', '.join(map(str, w['lengths']))} tokens)", 'programs a run': w['programs'],
             'steps an epoch': w['steps'], 'GFLOP per real token': f"{w['flops_per_token'] / 1e9:.3f}",
             'HBM MB per text': f"{w['hbm_bytes_per_row'] / 1e6:.1f}", 'roofline s an epoch': f"{w['roofline_s']:.2f}"}
            for name, w in (('to one length', pad['fixed']), ('to its bucket', pad['buckets']),
                            ('packed', pad['packed']))]
    r, most = pad['packed']['shape']
    return (f"The padding question on the TPU's terms: tutorial 01's RoBERTa-base on a v5e-8, one epoch over "
            f"{pad['rows']:,} texts of Rotten Tomatoes ({pad['real_tokens']:,} real tokens), each batch padded to 128 "
            f"tokens, to its length bucket, or packed ({r} rows of 128 tokens a device, at most {most} texts a row); "
            "FLOPs and HBM bytes from the compiler's cost analysis of each program, summed over the steps (packed: the "
            "training step's; libtpu crashes compiling this packed prediction program, so it is counted, not compiled)."
            "\n\n" +
            table(rows, list(rows[0])))

def smoke(part=None): main()

if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']:
        known = json.loads(Path(sys.argv[3]).read_text()) if sys.argv[3:] else None
        print('RESULT ' + json.dumps(child(json.loads(sys.argv[2]), known)), flush=True)
    elif SMOKE: smoke_alone('tpu_plan')
    else: main(fresh='--fresh' in sys.argv[1:])
