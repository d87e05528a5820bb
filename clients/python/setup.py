"""Generates markerd's protobuf modules (markerd/v1/*_pb2.py and .pyi) into the built package.

The .proto files come from the repository's Protos/ (two folders up) when building from a checkout,
or from the copy the sdist carries in protos/; the installed package needs neither.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIRS = [os.path.join(HERE, "..", "..", "Protos"), os.path.join(HERE, "protos")]


def proto_root():
    for d in PROTO_DIRS:
        if os.path.isdir(os.path.join(d, "markerd", "v1")):
            return d
    raise FileNotFoundError("markerd's .proto files: none of " + ", ".join(PROTO_DIRS))


class BuildWithProtos(build_py):
    def run(self):
        super().run()
        from grpc_tools import protoc
        root = proto_root()
        folder = os.path.join(root, "markerd", "v1")
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".proto"))
        out = self.build_lib
        args = ["protoc", "-I", root, "--python_out=" + out, "--pyi_out=" + out, *files]
        if protoc.main(args) != 0:
            raise RuntimeError("grpc_tools.protoc failed on " + " ".join(files))
        open(os.path.join(out, "markerd", "v1", "__init__.py"), "a").close()


class SdistWithProtos(sdist):
    """Carries Protos/markerd into the sdist (as protos/markerd), so a wheel builds from it alone."""
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        shutil.copytree(os.path.join(proto_root(), "markerd"), os.path.join(base_dir, "protos", "markerd"))


setup(cmdclass={"build_py": BuildWithProtos, "sdist": SdistWithProtos})
