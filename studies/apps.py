"""The studies app: study definitions, their steps and questions, the step-kind registry."""

from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "studies"
