from ..consts import alig
from .nothere import f
