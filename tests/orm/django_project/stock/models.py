from django.db import models


class StockLevel(models.Model):
    """PositiveIntegerField: Django adds CHECK ("quantity" >= 0)."""

    sku = models.CharField(max_length=20, unique=True)
    quantity = models.PositiveIntegerField(default=0)
