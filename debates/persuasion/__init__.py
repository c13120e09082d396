"""Study design C: formal persuasion dialogues (Prakken 2006) between people and AI agents."""
