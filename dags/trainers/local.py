"""How the example trainers get into a replica: an image per trainer, or an sdist for a python package spec.

On Vertex AI, a container image holds the ``trainers`` package on its ``PYTHONPATH`` and its
entrypoint is ``python -m trainers.<module>`` (README.md has the Dockerfile); the job's container spec
gives only the image and the args. The emulator runs an image without a ``command`` through its
image map: ``image_map`` gives, for each example image, the host command that does what the
image's entrypoint does -- this interpreter, with the ``dags/`` directory of this checkout on
``PYTHONPATH``. So the same spec (image + args) runs on both.

The other way, Vertex's prebuilt training containers with a python package spec, takes the package
as an sdist in Cloud Storage: ``build_sdist`` writes one (standard library only, deterministic
bytes); the emulator installs it from its local ``gs://`` directory the same way.

From a shell (with ``dags/`` on ``PYTHONPATH``): ``python -m trainers.local image-map`` prints the
emulator's ``--image-map`` flags; ``python -m trainers.local sdist DEST`` writes the sdist.
"""

from __future__ import annotations

import gzip
import io
import os
import shlex
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "DAGS_DIR",
    "DDP_TRAINER_IMAGE",
    "IMAGES",
    "LOGS_DEMO_IMAGE",
    "PACKAGE_NAME",
    "PREP_IMAGE",
    "PS_TRAINER_IMAGE",
    "TRAINERS_DIR",
    "build_sdist",
    "command",
    "image_map",
    "image_map_flags",
    "main",
]

TRAINERS_DIR = Path(__file__).resolve().parent
#: the directory that must be on PYTHONPATH for ``import trainers``
DAGS_DIR = TRAINERS_DIR.parent
#: the example images: the entrypoint of each is ``python -m <module>``
PS_TRAINER_IMAGE = "example.com/ml/ps-trainer:1.0"
DDP_TRAINER_IMAGE = "example.com/ml/ddp-trainer:1.0"
PREP_IMAGE = "example.com/ml/prep:1.0"
LOGS_DEMO_IMAGE = "example.com/ml/logs-demo:1.0"
IMAGES: Mapping[str, str] = {
    PS_TRAINER_IMAGE: "trainers.ps_trainer",
    DDP_TRAINER_IMAGE: "trainers.ddp_trainer",
    PREP_IMAGE: "trainers.prep",
    LOGS_DEMO_IMAGE: "trainers.logs_demo",
}
#: the distribution name of the sdist (the import package is ``trainers``)
PACKAGE_NAME = "vertex-dist-example-trainers"


def command(module: str, python: str = sys.executable) -> list[str]:
    """The host command running ``python -m module`` with ``dags/`` first on ``PYTHONPATH``."""
    path = os.pathsep.join(p for p in (str(DAGS_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return ["env", f"PYTHONPATH={path}", python, "-m", module]


def image_map(python: str = sys.executable) -> dict[str, list[str]]:
    """``{image: command}`` for the emulator (``EmulatorConfig.image_map`` / ``--image-map``)."""
    return {image: command(module, python) for image, module in IMAGES.items()}


def image_map_flags(python: str = sys.executable) -> list[str]:
    """The emulator's ``--image-map IMAGE=COMMAND`` flags for ``image_map``, shell-quoted."""
    return [
        f"--image-map {shlex.quote(image + '=' + shlex.join(argv))}"
        for image, argv in image_map(python).items()
    ]


def _pyproject(version: str) -> str:
    return (
        "[build-system]\n"
        'requires = ["setuptools>=61"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        "[project]\n"
        f'name = "{PACKAGE_NAME}"\n'
        f'version = "{version}"\n'
        'description = "Example trainers for distributed training on Vertex AI"\n'
        'requires-python = ">=3.10"\n'
        'dependencies = ["cloudml-hypertune"]\n\n'
        "[project.optional-dependencies]\n"
        'ddp = ["torch"]\n\n'
        "[tool.setuptools]\n"
        'packages = ["trainers"]\n'
    )


def build_sdist(dest: Path | str, version: str = "0.1.0") -> Path:
    """Write ``<dest>/vertex_dist_example_trainers-<version>.tar.gz`` (the ``trainers`` package).

    The archive is deterministic (sorted names, fixed times and owners): the same sources give the
    same bytes, so an upload can be skipped when nothing changed.
    """
    base = f"{PACKAGE_NAME.replace('-', '_')}-{version}"
    files: dict[str, bytes] = {
        "pyproject.toml": _pyproject(version).encode(),
        "PKG-INFO": (f"Metadata-Version: 2.1\nName: {PACKAGE_NAME}\nVersion: {version}\n").encode(),
    }
    for path in sorted(TRAINERS_DIR.glob("*.py")):
        files[f"trainers/{path.name}"] = path.read_bytes()
    out_dir = Path(dest)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{base}.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(f"{base}/{name}")
            info.size = len(files[name])
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    out.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m trainers.local", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("image-map", help="print the emulator's --image-map flags for the example images")
    sdist = sub.add_parser("sdist", help="write the trainers sdist into DEST and print its path")
    sdist.add_argument("dest", type=Path)
    sdist.add_argument("--version", default="0.1.0")
    args = p.parse_args(argv)
    if args.cmd == "image-map":
        print(" ".join(image_map_flags()))
    else:
        print(build_sdist(args.dest, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
