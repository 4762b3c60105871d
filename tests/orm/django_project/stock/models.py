from django.db import models


class StockLevel(models.Model):
    """PositiveIntegerField: Django adds CHECK ("quantity" >= 0). Later
    migrations add, lengthen, rename and remove columns (0002 to 0004)."""

    sku = models.CharField(max_length=40, unique=True)
    quantity = models.PositiveIntegerField(default=0)
    remark = models.TextField(null=True, blank=True)
