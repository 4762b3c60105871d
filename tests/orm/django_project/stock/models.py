from django.db import models


class Supplier(models.Model):
    name = models.CharField(max_length=50)


class StockLevel(models.Model):
    """PositiveIntegerField: Django adds CHECK ("quantity" >= 0). Later
    migrations add, lengthen, rename and remove columns (0002 to 0004) and
    add a ForeignKey to a new model (0005)."""

    sku = models.CharField(max_length=40, unique=True)
    quantity = models.PositiveIntegerField(default=0)
    remark = models.TextField(null=True, blank=True)
    supplier = models.ForeignKey(Supplier, null=True, on_delete=models.SET_NULL)
