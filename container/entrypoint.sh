#!/bin/sh
# Run the sidecar as PID 1's only child so SIGTERM reaches it and the reindex queue drains.
set -eu
mkdir -p "${SIDECAR_AGENT_DIR}"
exec sidecar "$@"
