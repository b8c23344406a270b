"""Decoder LLMs as k-fold classifiers (tpututor.backends.keras.model.llm, tpututor.backends.keras, tpututor.memory_plan through the CLI), as a user runs them: tiny Gemma, Qwen and Llama checkpoints written here with
transformers and tokenizers alone (nothing from tpututor), each trained with `tpututor train --backend keras --lora 4
--model-parallel 2` on the 8-device virtual TPU, predictions written in the label names; `tpututor plan` refusing a 7B
model that cannot fit on a v5e-1, naming what would."""
import json, subprocess
from pathlib import Path
import pandas as pd
import pytest
from conftest import venv_bin, clean_env

FAMILIES = {   # model_type -> (config class, causal-LM class, its tokenizer puts BOS before the text, extra config)
    'gemma': ('GemmaConfig', 'GemmaForCausalLM', True, dict(num_key_value_heads=1, head_dim=8)),
    'qwen2': ('Qwen2Config', 'Qwen2ForCausalLM', False, dict(num_key_value_heads=2, tie_word_embeddings=True)),
    'llama': ('LlamaConfig', 'LlamaForCausalLM', True, dict(num_key_value_heads=2, tie_word_embeddings=False)),
}

def tpututor(*args):
    r = subprocess.run([venv_bin('tpututor'), *map(str, args)], capture_output=True, text=True, env=clean_env(HF_HUB_OFFLINE='1'))
    return r.returncode, r.stdout, r.stderr

def checkpoint(folder:Path, model_type:str, texts)->Path:
    "A tiny random decoder saved as the hub saves it (from the causal-LM class), with a byte-level BPE tokenizer.json"
    import torch, transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, processors, trainers
    conf_cls, lm_cls, bos, extra = FAMILIES[model_type]
    tok = Tokenizer(models.BPE(unk_token='<unk>'))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=['<pad>', '<eos>', '<bos>', '<unk>'],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if bos: tok.post_processor = processors.TemplateProcessing(single='<bos> $A', special_tokens=[('<bos>', 2)])
    folder.mkdir(parents=True)
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token='<pad>', eos_token='<eos>', bos_token='<bos>').save_pretrained(folder)
    config = getattr(transformers, conf_cls)(vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2, **extra)
    torch.manual_seed(0)
    getattr(transformers, lm_cls)(config).save_pretrained(folder, safe_serialization=True)
    return folder

@pytest.fixture(scope='module')
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp('llm')
    from tpututor.data import rotten_tomatoes
    rt = rotten_tomatoes().sample(200, random_state=1).reset_index(drop=True)
    pd.DataFrame({'text': rt.text[:160], 'label': rt.label[:160].map({1: 'fresh', 0: 'rotten'})}).to_csv(d/'train.csv', index=False)
    pd.DataFrame({'id': range(40), 'text': rt.text[160:].values}).to_csv(d/'test.csv', index=False)
    return d

@pytest.mark.parametrize('model_type', list(FAMILIES))
def test_llm_classifier_kfold(model_type, data, tmp_path):
    model = checkpoint(tmp_path/model_type, model_type, pd.read_csv(data/'train.csv').text.tolist() * 3)
    out = tmp_path/'run'
    rc, so, se = tpututor('train', '--data', data/'train.csv', '--test', data/'test.csv', '--model', model, '--backend', 'keras',
                          '--lora', 4, '--model-parallel', 2, '--devices', 8, '--folds', 2, '--epochs', 1, '--max-len', 32,
                          '--batch-size', 4, '--lr', 1e-3, '--out', out)
    assert rc == 0, so[-3000:] + se[-3000:]
    assert 'mesh 4 batch x 2 model' in so, so[-2000:]                    # 8 devices: 4 replicas of the weights, each over 2
    pred = pd.read_csv(out/'predictions.csv')
    assert len(pred) == 40 and set(pred.label) <= {'fresh', 'rotten'}, pred.head()   # in the label names
    summary = json.loads((out/'summary.json').read_text())
    assert len(summary['fold_scores']) == 2
    saved = sorted(out.glob('fold*/*.safetensors'))
    from safetensors import safe_open
    with safe_open(saved[0], 'np') as f: keys = list(f.keys())
    assert keys and all('lora_kernel' in k or k.startswith('head/') for k in keys), keys   # only the adapters and the head

def test_plan_refuses_7b_on_v5e_1(tmp_path):
    from transformers import MistralConfig
    MistralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=8).save_pretrained(tmp_path/'mistral-7b')   # Mistral 7B's sizes: 7.24B weights
    rc, so, se = tpututor('plan', '--model', tmp_path/'mistral-7b', '--max-len', 1024, '--batch-size', 64, '--lora', 8,
                          '--accelerator', 'v5e-1')
    assert rc == 2, so + se
    assert '7,24' in so and 'activations' in so, so                       # per-device memory printed first
    assert "model_parallel=" in se and 'on a v5e-8' in se, se             # refused: a v5e-1 chip cannot hold it, a mesh on 8 chips can
