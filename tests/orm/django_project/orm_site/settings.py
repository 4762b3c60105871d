"""Settings of the minimal Django project tests/suite/orms.rs runs against
PostgreSQL and keyclaim. The database comes from the environment:
KEYCLAIM_ORM_DB_HOST, _PORT, _USER, _PASSWORD, _NAME."""

import os

SECRET_KEY = "keyclaim-orm-tests-not-secret"
DEBUG = False
ALLOWED_HOSTS: list[str] = []

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "shop",
    "stock",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("KEYCLAIM_ORM_DB_HOST", "127.0.0.1"),
        "PORT": os.environ.get("KEYCLAIM_ORM_DB_PORT", "5433"),
        "USER": os.environ.get("KEYCLAIM_ORM_DB_USER", "postgres"),
        "PASSWORD": os.environ.get("KEYCLAIM_ORM_DB_PASSWORD", ""),
        "NAME": os.environ.get("KEYCLAIM_ORM_DB_NAME", "keyclaim"),
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        # ORM_ECHO=1 logs every statement Django sends (to stderr).
        "django.db.backends": {
            "handlers": ["stderr"],
            "level": "DEBUG" if os.environ.get("ORM_ECHO") == "1" else "WARNING",
        },
        "django.db.backends.schema": {
            "handlers": ["stderr"],
            "level": "DEBUG" if os.environ.get("ORM_ECHO") == "1" else "WARNING",
            "propagate": False,
        },
    },
}
