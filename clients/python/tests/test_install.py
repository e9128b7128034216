"""The documented install: Debian's python3 and pip, a fresh venv that sees
Debian's psycopg, `pip install --no-build-isolation --no-index` of a copy
of clients/python (no network, no index), then the quick start run from
elsewhere with the installed package."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import HERE


def test_pip_install_into_a_fresh_venv_and_run_the_quickstart(dsn, tmp_path):
    root = os.path.dirname(HERE)
    src = tmp_path / "python"      # a copy: a build writes build/ and *.egg-info
    shutil.copytree(root, src, ignore=shutil.ignore_patterns("__pycache__", "build",
                                                             "*.egg-info", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                          str(src)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(src / "examples" / "quickstart.py", app / "quickstart.py")
    shutil.rmtree(src)              # the installed package, not the copy
    where = subprocess.run([py, "-c", "import jobqueue; print(jobqueue.__file__)"], cwd=app,
                           env=env, capture_output=True, text=True, timeout=60)
    assert str(venv) in where.stdout, where.stdout + where.stderr
    out = subprocess.run([py, "quickstart.py"], cwd=app, env={**env, "JOBQUEUE_DSN": dsn},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "sent 3 e-mails" in out.stdout
