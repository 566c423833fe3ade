"""A Podman container on the mounted workspace: ``exec`` with a per-command diff,
try-runs (``try_exec``) kept only if accepted, best-of-N trials (``best_of``, and
``MountTrials`` for a workspace a daemon mounts), container snapshots, the ``shell``
tool (with dry runs and ``try_tools``, and ``trial_tools``) and the
``PodmanWorkspace`` section.

See docs/sandbox.md. One sandbox per process (pyfuse3 serves one mount per process).
"""

from ._config import SandboxConfig as SandboxConfig
from ._config import SandboxOptions as SandboxOptions
from ._config import Size as Size
from ._config import parse_size as parse_size
from ._mount_trials import MountTrials as MountTrials
from ._podman import SECURITY_OPTIONS as SECURITY_OPTIONS
from ._podman import PodmanError as PodmanError
from ._podman import containers_conf as containers_conf
from ._podman import podman_binary as podman_binary
from ._podman import podman_env as podman_env
from ._preflight import SandboxUnavailableError as SandboxUnavailableError
from ._preflight import preflight as preflight
from ._preflight import require as require
from ._result import ExecResult as ExecResult
from ._result import SandboxSnapshot as SandboxSnapshot
from ._result import SnapshotStrategy as SnapshotStrategy
from ._run import run_command as run_command
from ._sandbox import PodmanSandbox as PodmanSandbox
from ._section import PodmanWorkspace as PodmanWorkspace
from ._shell import DryRunShellParams as DryRunShellParams
from ._shell import ShellParams as ShellParams
from ._shell import describe_result as describe_result
from ._shell import shell_tool as shell_tool
from ._state import cleanup_stale as cleanup_stale
from ._trial import KEPT_DECIDED as KEPT_DECIDED
from ._trial_tools import AcceptAttemptParams as AcceptAttemptParams
from ._trial_tools import BestOfParams as BestOfParams
from ._trial_tools import DropTrialParams as DropTrialParams
from ._trial_tools import Trials as Trials
from ._trial_tools import describe_accepted as describe_accepted
from ._trial_tools import describe_trial as describe_trial
from ._trial_tools import trial_tools as trial_tools
from ._try import MAX_PENDING_TRIES as MAX_PENDING_TRIES
from ._try import TryRun as TryRun
from ._try import TryState as TryState
from ._try_tools import AcceptParams as AcceptParams
from ._try_tools import TryParams as TryParams
from ._try_tools import describe_accept as describe_accept
from ._try_tools import try_tools as try_tools
