# A model keyed by an AutoField (an integer identity column), a ForeignKey
# to it, and an IntegerField widened to a bigint one: what a project
# created before DEFAULT_AUTO_FIELD = BigAutoField has, before 0007.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('stock', '0005_supplier'),
    ]

    operations = [
        migrations.CreateModel(
            name='Bin',
            fields=[
                ('id', models.AutoField(primary_key=True, serialize=False)),
                ('label', models.CharField(max_length=20)),
            ],
        ),
        migrations.AddField(
            model_name='stocklevel',
            name='bin',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, to='stock.bin'),
        ),
        migrations.AlterField(
            model_name='stocklevel',
            name='quantity',
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
