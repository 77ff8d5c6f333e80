"""The one list of event sources: every other list of sources is derived from it or equal to it."""

from __future__ import annotations

from typing import get_args

from chalicelib.domain import signatures
from chalicelib.domain.event_sources import DELIVERED_SOURCES, EVENT_SOURCES, SIGNED_SOURCES
from chalicelib.domain.signatures.inbound import _VERIFIERS
from chalicelib.domain.spec import EventIn, EventSource


def test_the_sources_are_the_signed_ones_then_the_delivered_ones_each_once():
    assert len(set(EVENT_SOURCES)) == len(EVENT_SOURCES)
    assert SIGNED_SOURCES + DELIVERED_SOURCES == EVENT_SOURCES


def test_the_request_models_literal_is_the_list_of_sources():
    # Spelled out for the type checker: it must say exactly what EVENT_SOURCES says.
    assert get_args(EventSource) == EVENT_SOURCES
    assert get_args(EventIn.model_fields["source"].annotation) == EVENT_SOURCES


def test_every_signed_source_has_a_verifier_and_no_delivered_one_does():
    assert signatures.SOURCES == SIGNED_SOURCES
    assert set(_VERIFIERS) == set(SIGNED_SOURCES)
