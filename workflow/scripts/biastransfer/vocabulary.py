"""Class vocabularies the config check knows without data: the synthetic demo's (drawn by
biastransfer.data.synthetic): two figure groups, four objects, their pairs and ``random``."""

SYNTHETIC_GROUPS = ("person_a", "person_b")
SYNTHETIC_OBJECTS = ("car", "surfboard", "refrigerator", "stop_sign")
SYNTHETIC_CLASSES = (
    *SYNTHETIC_GROUPS,
    *SYNTHETIC_OBJECTS,
    *(f"{o}_{g}" for o in SYNTHETIC_OBJECTS for g in SYNTHETIC_GROUPS),
    "random",
)
