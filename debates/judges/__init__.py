"""LLM participants for design A (paper 000, Tables 30-34): each dialogue judged by several
configured models with the participant prompt, as a resumable job (`debates.jobs`).

- `prompts`: the Table 30 prompt, the answer's schema, the judge models of a configuration;
- `offline`: the offline backend's judge (demo, tests);
- `results`: Table 31's rows for the admin; `services`: the database side;
- `kinds`: the job kind "llm_participants" (plan, run, summary, its config form).

The export table `llm_judgements` is `analysis.exports.llm_judges`; the report's section is
`analysis.metrics.llm_judges`.
"""
