from django.db import models


class StockLevel(models.Model):
    """PositiveIntegerField: Django adds CHECK ("quantity" >= 0), which
    keyclaim refuses (0A000); migrated only as a known failure."""

    sku = models.CharField(max_length=20, unique=True)
    quantity = models.PositiveIntegerField(default=0)
