"""What the app does once, when it starts serving."""

from __future__ import annotations

import gc

from hangar.app import create_app
from hangar.foundation.config import Settings


async def test_what_exists_at_startup_is_frozen_out_of_full_collections(
    settings: Settings,
) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    app = create_app(settings=settings)  # services of its own: the lifespan closes them
    try:
        async with app.router.lifespan_context(app):
            # the modules, the app's routes and schemas: far more than a request makes
            assert gc.get_freeze_count() > 50_000
    finally:
        gc.unfreeze()
