# Reproduces this accuracy run (harness 0.1.0, lm-eval 0.4.13).
import json

import lm_eval
from lm_eval.tasks import TaskManager

results = lm_eval.simple_evaluate(
    model='local-completions',
    model_args={'base_url': 'http://127.0.0.1:54235/v1/completions', 'model': 'SmolLM2-135M-Instruct', 'tokenizer_backend': None, 'tokenized_requests': False, 'num_concurrent': 1, 'max_retries': 3, 'timeout': 300},
    tasks=['harness_longbench_mini'],
    num_fewshot=None,
    log_samples=True,
    apply_chat_template=False,
    gen_kwargs={'max_gen_toks': 12, 'temperature': 0},
    samples={'harness_longbench_mini': [0, 1, 2, 3, 4, 5]},
    task_manager=TaskManager(include_path='/work/main/reports/examples/reports/example/evidence/.staging/04-accuracy.attempt-1/accuracy/longbench-mini/task', include_defaults=False),
)
print(json.dumps(results['results'], indent=2, default=str))
