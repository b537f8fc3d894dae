"""Spam, advertising and site-boilerplate lines for the `spam_insertion` corruption.

All phrases are invented for this project. `{k0}`..`{k3}` are filled with the document's own
frequent words, which is how keyword stuffing targets a page's topic; `{n}` is a number.
"""

from __future__ import annotations

SPAM_TEMPLATES = (
    "We value your privacy. This website stores cookies on your device to improve your "
    "experience and show you personalised offers. [Accept all] [Reject] [Settings]",
    "By continuing to browse this site you agree to our use of cookies. OK, got it",
    ">>> CLICK HERE to download the complete {k0} guide for FREE <<<",
    "Click here now!!! Limited {k0} offer ends tonight - {n}% OFF everything",
    "Subscribe to our newsletter and never miss another {k0} update. Enter your email:",
    "Share this page: Facebook | Twitter | Pinterest | WhatsApp | Email | Print",
    "Sponsored content: experts are stunned by this simple {k1} trick",
    "cheap {k0} | buy {k0} online | best {k0} price | {k1} discount | {k0} {k1} sale",
    "{k0} {k0} {k1} {k0} best {k0} top {k1} {k2} {k0} free {k0} {k3} {k0} 2024 {k0}",
    "Tags: {k0}, {k1}, {k2}, {k3}, {k0} online, free {k1}, best {k2}, cheap {k0}",
    "ADVERTISEMENT",
    "Related posts: Top {n} {k0} secrets | Why {k1} matters | You won't believe this {k2}",
    "Home | About us | Shop | Blog | Contact | Login | Register | Cart (0)",
    "Posted by admin on {n}/0{n1}/2019 | {n} comments | Leave a reply",
    "Make ${n}0 a day from home with {k0}! No experience needed, start today!!!",
    "Congratulations! You have been selected to receive a free gift card. Claim it now >>",
    "Read more >> | Continue reading | Next page >>",
    "Copyright (c) All rights reserved. Site built with EasyPageMaker.",
    "Download our app - available for phones and tablets - rated {n1}.{n1} stars",
    "Hot {k0} deals near you! Compare {n} offers and save up to {n}% today",
    "Do you like this article? Rate it: * * * * * ({n} votes)",
    "Warning: this page uses JavaScript. Please enable JavaScript to view all {k0} content.",
    "Best {k0} 2024 - {k0} reviews - {k0} for sale - {k0} near me - {k0} cheap",
    "Sign up today and get {n}% off your first {k1} order. Use code SAVE{n}",
)


def spam_line(pick: float, keywords: list[str]) -> str:
    """The spam line that `pick` in [0, 1) selects, filled with `keywords` (at least 4)."""
    template = SPAM_TEMPLATES[int(pick * len(SPAM_TEMPLATES)) % len(SPAM_TEMPLATES)]
    number = 10 + int(pick * 1000) % 80
    fields = {f"k{i}": word for i, word in enumerate(keywords[:4])}
    return template.format(n=number, n1=1 + number % 9, **fields)
