from typing import Optional

from .communicator import OPS as OPS, BufferLike as BufferLike, Communicator as Communicator
from .communicator import PreMulSum as PreMulSum
from .communicator import ReduceOp as ReduceOp, group as group
from .errors import BraidError as BraidError, InternalError as InternalError
from .errors import InvalidArgumentError as InvalidArgumentError
from .errors import InvalidUsageError as InvalidUsageError, RemoteError as RemoteError
from .errors import BraidSystemError as BraidSystemError, BraidTimeoutError as BraidTimeoutError
from .work import Work as Work

SPLIT_NOCOLOR: int
library_path: str

def version() -> tuple[int, int, int]: ...
def init(timeout_ms: Optional[int] = ..., transports: Optional[str] = ...) -> Communicator: ...
def get_unique_id() -> bytes: ...
def init_rank(size: int, unique_id: bytes, rank: int, timeout_ms: Optional[int] = ...,
              transports: Optional[str] = ..., name: str = ...) -> Communicator: ...
