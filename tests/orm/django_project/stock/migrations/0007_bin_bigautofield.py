# AutoField to BigAutoField: what changing DEFAULT_AUTO_FIELD makes for
# every model. Django alters the key, its identity sequence and the
# ForeignKey column that references it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('stock', '0006_bin'),
    ]

    operations = [
        migrations.AlterField(
            model_name='bin',
            name='id',
            field=models.BigAutoField(primary_key=True, serialize=False),
        ),
    ]
