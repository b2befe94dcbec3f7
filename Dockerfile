# One image for every role; docker-compose.yml picks the role by command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain domain
COPY application application
COPY adapters adapters
COPY projections projections
COPY entrypoints entrypoints
RUN pip install --no-cache-dir . && useradd --system club
USER club
ENTRYPOINT ["club"]
