# The solver worker image: `docker compose up` runs it (see docker-compose.yml).
#   docker build -t memo-solver .
#   docker run --rm -e MEMO_SOLVER_REDIS_URL=redis://HOST:6379/0 memo-solver
# The same image runs the CLI: docker run --rm -it memo-solver memo-solver --help
FROM python:3.11-slim

# One BLAS thread per process: parallelism comes from worker replicas, and N replicas
# times N cores of BLAS threads would only fight over the CPUs.
ENV OPENBLAS_NUM_THREADS=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Install from a throwaway copy of the sources (.dockerignore keeps out the venv, caches
# and .git), then delete it: the worker runs the installed packages, not the checkout.
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir . \
    && cd / \
    && rm -rf /src

# Never run as root. The worker keeps no state on disk but compiled code: everything else
# lives in Redis.
RUN useradd --create-home --uid 10001 --user-group solver
USER solver
WORKDIR /home/solver

# The solver's loops compiled once, at build time, into a folder of the image's user, so no
# container pays it at start. The machine code is for the build host's CPU model: on
# another model the first process of each container compiles again (seconds; see the
# README's "Compiled code").
ENV MEMO_SOLVER_COMPILE_CACHE=/home/solver/.cache/memo-solver/compiled
RUN memo-solver compile

# Exec form: python is the process that receives `docker stop`'s SIGTERM (compose adds an
# init as PID 1 that forwards it), so the worker can release its claims and exit cleanly.
CMD ["python", "-m", "worker"]
