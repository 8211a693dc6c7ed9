from delegate.decide.relevance import Query, pair_score, rank_background, rank_intents, topical
from delegate.models import BackgroundItem, Profile

PROFILE = Profile(
    name="Rohan Mehta",
    intents=["Whether the security questionnaire can be answered by Friday"],
    background=[
        BackgroundItem(context="When the outage root cause is discussed", information="The outage came from an expired TLS certificate on the EU load balancer."),
        BackgroundItem(context="When SLA credits come up", information="The contract gives 10% credit per hour below 99.9% availability."),
        BackgroundItem(context="When the outage is discussed", information="I will resign next month.", shareable=False),
    ],
)


def test_the_item_whose_context_fits_ranks_first():
    ranked = rank_background("What was the root cause of the outage last week?", PROFILE)
    assert ranked[0].index == 0
    assert 2 not in [m.index for m in ranked]  # never a private item
    assert rank_background("How much SLA credit do they get?", PROFILE)[0].index == 1


def test_private_items_are_ranked_only_when_asked_for():
    assert 2 in [m.index for m in rank_background("the outage", PROFILE, shareable_only=False)]


def test_intents_and_topical():
    assert rank_intents("Can we answer the security questionnaire this week?", PROFILE)[0].score > 0.4
    assert topical("Lunch is at noon in the cafeteria.", PROFILE) < topical("The load balancer certificate expired.", PROFILE)


def test_a_query_of_several_turns_matches_one_built_from_their_text():
    turns = ["The outage hit the EU region.", "Was it the certificate again?"]
    q = Query.of(turns)
    assert q.words >= {"outage", "certificate"}
    assert abs(pair_score(q, PROFILE.background[0].information) - pair_score(" ".join(turns), PROFILE.background[0].information)) < 0.15


def test_the_encoder_reads_which_item_answers_and_never_scores_a_private_one():
    from delegate.decide.relevance import read_items

    profile = Profile(name="Rohan Mehta", background=[
        BackgroundItem(context="", information="Reviewers of speech translation papers are hard to find."),
        BackgroundItem(context="", information="The reviewers accepted our paper with minor revisions."),
        BackgroundItem(context="", information="Our paper was accepted, and I am leaving the company.", shareable=False),
    ])
    scores = read_items("Has anyone heard back from the reviewers about our paper?", profile)
    assert scores[1] > scores[0] > 0 and scores[2] == 0
    assert not read_items("   ", profile).any()
