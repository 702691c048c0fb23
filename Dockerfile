# The image the Kubernetes profile (profiles/kubernetes) runs its jobs in: this repository's pinned
# Python environment. Build and push it, then pass its name with --container-image:
#   docker build -t REGISTRY/tpu-matmul-repro:TAG . && docker push REGISTRY/tpu-matmul-repro:TAG
FROM python:3.12-slim-bookworm
# Pango for WeasyPrint's PDF output; git for the commit recorded with every result.
RUN apt-get update && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 git \
    && rm -rf /var/lib/apt/lists/*
# The project is installed from this build's checkout (rebuild the image after changing its code).
COPY . /opt/tpu-matmul-repro
RUN python3 -m pip install --no-cache-dir -r /opt/tpu-matmul-repro/requirements.txt -e /opt/tpu-matmul-repro
