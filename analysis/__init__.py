"""The analysis app: exports, the papers' metrics, reports and the analyst's admin pages."""
