"""`mlflow_triton.local` is a part of its own: importing the logging wrappers loads none of it, and importing it
loads no pytriton, torch or transformers. Which parts may import it is the layer list's
(tests/unit/project/test_layers.py).
"""

import subprocess
import sys


def test_logging_a_model_loads_no_local_module_when_the_wrappers_are_imported():
    probe = (
        "import sys; import mlflow_triton.sklearn, mlflow_triton.triton, mlflow_triton.runtime;"
        "print(sorted(m for m in sys.modules if m.startswith('mlflow_triton.local')))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr


def test_importing_the_local_part_never_imports_nvidia_pytriton_when_it_locates_the_server():
    probe = (
        "import sys; import mlflow_triton.local;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytriton', 'torch', 'transformers')))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)

    assert completed.stdout.splitlines()[-1] == "[]", completed.stderr
