"""A host app as our users write them, with a2a_flask mounted in it: an app
factory, Flask-Login (sessions, and a ``request_loader`` for its own bearer
tokens), Flask-SQLAlchemy on the same SQLite file as ``A2A_DATABASE``,
Flask-WTF's CSRFProtect, Flask-Migrate (Alembic) and error handlers of its
own, registered before and after ``init_app``.

``create_app(database, migrations)``; ``gunicorn hostapp:app`` takes them
from ``HOST_DATABASE`` and ``HOST_MIGRATIONS``.
"""

import os

from flask import Flask, jsonify, request
from flask_login import (LoginManager, UserMixin, current_user, login_required,
                         login_user)
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect, generate_csrf
from werkzeug.exceptions import HTTPException

from a2a_flask import A2A, InputRequired, alembic_include_object

db = SQLAlchemy()
login_manager = LoginManager()
csrf = CSRFProtect()
migrate = Migrate()
a2a = A2A()


class User(UserMixin, db.Model):
    id = db.Column(db.Integer, primary_key=True)
    name = db.Column(db.String(80), unique=True, nullable=False)
    api_token = db.Column(db.String(64), unique=True)


def user_of_token(token):
    return User.query.filter_by(api_token=token).first() if token else None


@login_manager.user_loader
def load_user(user_id):
    return User.query.filter_by(id=int(user_id)).first()


@login_manager.request_loader
def load_user_from_request(req):
    scheme, _, token = req.headers.get("Authorization", "").partition(" ")
    return user_of_token(token) if scheme.lower() == "bearer" else None


@a2a.token_caller
def a2a_from_token(token):
    user = user_of_token(token)
    return str(user.id) if user else None


@a2a.session_caller
def a2a_from_session():
    return str(current_user.id) if current_user.is_authenticated else None


@a2a.agent("helpdesk", description="Answers the host's users.")
def helpdesk(turn):
    if turn.text == "ask":
        return InputRequired("What is the problem?")
    user = User.query.filter_by(id=int(turn.caller.id.split(":", 1)[1])).first()
    return "Hello %s, about: %s" % (user.name, turn.text)


def create_app(database, migrations=None):
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY="host secret", SQLALCHEMY_DATABASE_URI="sqlite:///" + database,
        A2A_DATABASE=database, A2A_DEFAULT_AGENT="helpdesk")

    # Before init_app: the host's API answers its errors as JSON.
    @app.errorhandler(HTTPException)
    def host_error(exc):
        return jsonify(host_error=exc.name), exc.code

    db.init_app(app)
    login_manager.init_app(app)
    csrf.init_app(app)
    migrate.init_app(app, db, directory=migrations or "migrations",
                     include_object=alembic_include_object)
    a2a.init_app(app)

    # After init_app: the host's own 404 page.
    @app.errorhandler(404)
    def host_404(exc):
        return "<html><body>host page not found</body></html>", 404

    @app.route("/")
    def home():
        return "<html><body>home</body></html>"

    @app.route("/login")
    def login_form():
        return jsonify(csrf_token=generate_csrf())

    @app.route("/login", methods=["POST"])  # a form: CSRF-protected
    def login():
        user = User.query.filter_by(name=request.form["name"]).first_or_404()
        login_user(user)
        return jsonify(user=user.name)

    @app.route("/me")
    @login_required
    def me():
        return jsonify(user=current_user.name)

    return app


def add_user(name, token):
    db.session.add(User(name=name, api_token=token))
    db.session.commit()


if os.environ.get("HOST_DATABASE"):
    app = create_app(os.environ["HOST_DATABASE"], os.environ.get("HOST_MIGRATIONS"))
