"""The studies app: study definitions, steps and questions, the step-kind registry."""
