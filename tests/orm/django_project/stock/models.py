from django.db import models


class Supplier(models.Model):
    name = models.CharField(max_length=50)


class Bin(models.Model):
    """Created keyed by an AutoField (0006), made a BigAutoField (0007)."""

    id = models.BigAutoField(primary_key=True)
    label = models.CharField(max_length=20)


class StockLevel(models.Model):
    """PositiveIntegerField: Django adds CHECK ("quantity" >= 0). Later
    migrations add, lengthen, rename and remove columns (0002 to 0004),
    add a ForeignKey to a new model (0005), and widen quantity to a
    PositiveBigIntegerField beside a ForeignKey whose target's key is
    widened (0006, 0007)."""

    sku = models.CharField(max_length=40, unique=True)
    quantity = models.PositiveBigIntegerField(default=0)
    remark = models.TextField(null=True, blank=True)
    supplier = models.ForeignKey(Supplier, null=True, on_delete=models.SET_NULL)
    bin = models.ForeignKey(Bin, null=True, on_delete=models.CASCADE)
