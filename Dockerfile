# One image for the web (daphne) and worker (celery) services of docker-compose.yml.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STATIC_COLLECTED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY twin ./twin
COPY topology ./topology
COPY scenarios ./scenarios
RUN pip install --no-cache-dir .
COPY . .
RUN DATABASE_URL=sqlite:////tmp/collect.sqlite3 python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "twin.asgi:application"]
