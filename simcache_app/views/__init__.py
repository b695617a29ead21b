"""The page's tabs but sizing (:mod:`simcache_app.sizing`): one run (:mod:`.single`), a sweep of one
parameter (:mod:`.sweep`) and a comparison of variants (:mod:`.compare`), with the pieces they share
(:mod:`.widgets`). app.py is the frame that puts them in tabs under the sidebar."""
