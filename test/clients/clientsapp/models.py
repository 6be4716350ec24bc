"""Django models of the three compared tables (compare.py creates the tables).

One model per table, identical fields: what an application written for the
plain table would declare.  managed = False: Django never creates or alters
them; the tables live in schema "chk", found through the connection's
search_path.
"""
from django.db import models
from django.utils import timezone


class Payment(models.Model):
    id = models.BigAutoField(primary_key=True)
    ts = models.DateTimeField(default=timezone.now)
    cid = models.IntegerField()
    email = models.TextField(null=True, unique=True)
    n = models.IntegerField(default=0)
    status = models.TextField(default="new")
    version = models.IntegerField(default=1)

    class Meta:
        abstract = True
        managed = False
        app_label = "clientsapp"


class PayPlain(Payment):
    class Meta(Payment.Meta):
        db_table = "pay_plain"


class PayView(Payment):
    class Meta(Payment.Meta):
        db_table = "pay_view"


class PayTable(Payment):
    class Meta(Payment.Meta):
        db_table = "pay_table"
