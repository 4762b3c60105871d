from django.db import models


class Customer(models.Model):
    # id: BigAutoField (DEFAULT_AUTO_FIELD), a bigint identity column.
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=100, db_index=True)
    joined = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name


class Tag(models.Model):
    name = models.CharField(max_length=50, unique=True)


class Product(models.Model):
    sku = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=100)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    active = models.BooleanField(default=True)
    tags = models.ManyToManyField(Tag, related_name="products")

    class Meta:
        indexes = [models.Index(fields=["name", "price"], name="product_name_price_idx")]


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    number = models.IntegerField()
    placed = models.DateField()
    note = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["customer", "number"], name="uniq_customer_order_number")
        ]


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="lines")
    # IntegerField: a PositiveIntegerField adds a CHECK, which keyclaim
    # refuses (the app stock has one).
    quantity = models.IntegerField()

    class Meta:
        unique_together = [("order", "product")]



class Review(models.Model):
    """Added by the second migration: a new table with foreign keys to
    existing ones."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="reviews")
    author = models.ForeignKey(
        Customer, on_delete=models.SET_NULL, null=True, related_name="reviews"
    )
    stars = models.SmallIntegerField()
    body = models.TextField()
