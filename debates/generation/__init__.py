"""Building design A's dialogue library with models (paper 000, Tables 9-29): reason
selection, content plans, the six-turn rollout with the bias interventions, the
debate-quality judge and the manifestation check, as LLM job kinds (`debates.jobs`).

specs (the 17 conditions, the interventions) <- plans (content plans) <- prompts <- offline
and pipeline (the model side) <- services (the database side) <- kinds (the job kinds)."""
