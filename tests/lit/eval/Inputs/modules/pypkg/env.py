# Patterns of sglang's srt/environ.py, platforms/__init__.py and kernel_api_logging.py.
import builtins
import enum
import os


class EnvField:
    def __init__(self, default):
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        return self.default


class Envs:
    BLOCK = EnvField(64)


envs = Envs()
BLOCK = envs.BLOCK.get() if envs.BLOCK.name == "BLOCK" else 0


class Mode(enum.Enum):
    OFF = "off"
    ON = "on"

    @classmethod
    def from_env(cls):
        try:
            return cls(os.environ.get("MODE", "off"))
        except ValueError:
            raise ValueError("bad MODE")


MODE = Mode.from_env()

builtins.PYPKG_MAX = 448.0

if os.environ.get("PYPKG_FAST") == "1":
    def scale_of(x):
        return x * 2
else:
    from math import floor as scale_of


def mark(f):
    if hasattr(f, "_marked"):
        return f
    f._marked = True
    return f


def __getattr__(name):
    if name == "LAZY":
        return 3
    raise AttributeError(name)


import logging

logger = logging.getLogger("pypkg")
setattr(logger, "info_once", logger.info)
