"""Study design B (paper 001): participants judge a claim before and after a live exchange
with two AI debaters (debate) or one AI advisor (consultancy), streamed over a websocket."""
