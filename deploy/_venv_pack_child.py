"""``python -m mlflow_triton.deploy._venv_pack_child SPEC.json``: venv-pack2 in a process of its own.

:func:`mlflow_triton.deploy._archive.pack_environment` runs this in its own process group, so that Ctrl-C or
SIGTERM stops the packing as a whole and the partial archive (venv-pack writes it in ``$TMPDIR``, which the
parent points into its staging directory) goes with the staging directory. The spec (JSON) holds:

``env``: the virtualenv to pack (only read); ``output``: the archive to write; ``python_prefix``: venv-pack's
option (the interpreter's prefix on the target, rewrites ``home`` in ``pyvenv.cfg``) or null;
``replace``: ``{archive path: symlink target}`` for members written as links instead (``bin/python3.X``: venv-pack
0.9.2 rewrites that link wrongly with ``python_prefix``); ``add``: ``[[source file, archive path], ...]``;
``exclude``: venv-pack patterns; ``compress_level``: gzip level.
"""

import json
import os
import sys
import tempfile


def main(argv: list[str]) -> int:
    with open(argv[1]) as f:
        spec = json.load(f)
    import venv_pack

    env = venv_pack.Env(spec["env"])
    for pattern in spec.get("exclude", []):
        env = env.exclude(pattern)
    links_dir = tempfile.mkdtemp(prefix="links-")
    replaced = spec.get("replace", {})
    files = [f for f in env.files if f.target not in replaced]
    for number, (target, link_to) in enumerate(sorted(replaced.items())):
        link = os.path.join(links_dir, str(number))
        os.symlink(link_to, link)
        files.append(venv_pack.File(link, target))
    files.extend(venv_pack.File(source, target) for source, target in spec.get("add", []))
    env.files = files
    env.pack(output=spec["output"], python_prefix=spec.get("python_prefix"), compress_level=spec["compress_level"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
