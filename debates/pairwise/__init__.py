"""Study design D (paper 003, §5): crowd annotators compare two debate excerpts and say
which Speaker A was more persuasive."""
