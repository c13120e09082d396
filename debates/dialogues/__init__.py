"""Study design A (paper 000): participants read one pre-generated debate about a mystery
and judge which side argues for the true culprit."""
