# RisingSpark: one image for every service (the playground, or meta/compute/compactor/frontend), and
# for the Spark master and workers of docker-compose.yml, whose executors run RisingSpark's tasks.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/risingspark
COPY pyproject.toml README.md ./
COPY risingspark ./risingspark
COPY frontend ./frontend
COPY meta ./meta
COPY compute ./compute
COPY compactor ./compactor
COPY migrations ./migrations
# The same install step as the README's.
RUN pip install --no-cache-dir -e .

ENV RISINGSPARK_HOST=0.0.0.0 \
    RISINGSPARK_DATA_DIR=/data
VOLUME /data
# frontend, meta, compute, compactor, frontend /metrics
EXPOSE 4566 5690 5688 6660 2222
ENTRYPOINT ["risingspark"]
CMD ["playground"]
