"""Values several pytest-xdist workers would each compute, made once per test session: the first worker
to ask makes and pickles one in the folder the workers share (conftest.made_once), the others read it."""
import pickle

made_in_folder = None  # conftest's made_once(name, make) for this session; None outside a pytest session


def made_once_per_session(name: str, make):
    if made_in_folder is None:
        return make()
    made = []

    def pickled(folder):
        made.append(make())
        folder.mkdir()
        (folder / "value.pickle").write_bytes(pickle.dumps(made[0], pickle.HIGHEST_PROTOCOL))

    folder = made_in_folder(name, pickled)
    return made[0] if made else pickle.loads((folder / "value.pickle").read_bytes())
