"""The arrivals benchmark's study in oTree: the same pages and answers as bench/study.py."""

from otree.api import BaseConstants, BaseGroup, BasePlayer, BaseSubsession, Page, models, widgets

LIKERT = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]


class C(BaseConstants):
    NAME_IN_URL = "survey"
    PLAYERS_PER_GROUP = None
    NUM_ROUNDS = 1


class Subsession(BaseSubsession):
    pass


class Group(BaseGroup):
    pass


class Player(BasePlayer):
    consent = models.BooleanField(label="Please read this and agree.")
    colour = models.StringField(
        choices=["Red", "Green", "Blue"], widget=widgets.RadioSelect, label="Pick a colour"
    )
    agree = models.IntegerField(
        choices=[[n, text] for n, text in enumerate(LIKERT, 1)],
        widget=widgets.RadioSelectHorizontal,
        label="I enjoy taking part in studies.",
    )
    warmth = models.IntegerField(min=0, max=100, label="How warm is it?")
    age = models.IntegerField(min=18, max=99, label="Your age")
    why = models.LongStringField(label="Why did you take part?")
    again = models.StringField(
        choices=["Yes", "No", "Maybe"], widget=widgets.RadioSelect, label="Would you take part again?"
    )


def why_error_message(player, value):
    if len(value) < 10:
        return "Please write at least 10 characters."


class Consent(Page):
    form_model = "player"
    form_fields = ["consent"]


class AboutYou(Page):
    form_model = "player"
    form_fields = ["colour", "agree"]


class Numbers(Page):
    form_model = "player"
    form_fields = ["warmth", "age"]


class InYourWords(Page):
    form_model = "player"
    form_fields = ["why", "again"]


class Debrief(Page):
    pass


page_sequence = [Consent, AboutYou, Numbers, InYourWords, Debrief]
