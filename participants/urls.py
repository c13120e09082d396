"""The participant pages: the study link, the preview, the current step; Prolific's webhook."""

from django.urls import path

from participants import prolific_views, views

urlpatterns = [
    path("s/<slug:slug>/", views.enter, name="enter"),
    path("s/<slug:slug>/preview/", views.preview, name="preview"),
    path("p/<str:token>/", views.step, name="step"),
    path("prolific/webhook/", prolific_views.webhook, name="prolific_webhook"),
]
